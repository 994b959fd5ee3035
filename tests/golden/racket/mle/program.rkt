#lang racket/base
(define b (make-bytes (* 600 1024 1024) 1))
(displayln (bytes-ref b 7))
