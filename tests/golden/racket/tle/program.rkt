#lang racket/base
(let loop ([x 0]) (loop (add1 x)))
