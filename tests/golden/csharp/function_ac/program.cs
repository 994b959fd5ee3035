public static int add(int a, int b) {
    System.Console.WriteLine("printing does not matter");
    return a + b;
}
