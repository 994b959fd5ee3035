#lang racket/base
(define a (read))
(displayln (+ a undefined-name))
