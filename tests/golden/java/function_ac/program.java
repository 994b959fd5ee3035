public static int add(int a, int b) {
    System.out.println("printing does not matter");
    return a + b;
}
