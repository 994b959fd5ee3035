function add(a, b) {
  console.log("printing does not matter");
  return a + b;
}
