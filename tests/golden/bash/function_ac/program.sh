add() {
  echo $(($1 + $2))
}
