#lang racket
(define (add a b)
  (displayln "printing does not matter")
  (+ a b))
