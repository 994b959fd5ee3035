#lang racket/base
(error "bad input")
