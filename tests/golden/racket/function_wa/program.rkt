(define (add a b) (+ (* a b) 100))
