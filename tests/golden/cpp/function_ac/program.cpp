int add(int a, int b) {
    printf("printing does not matter\n");
    return a + b;
}
