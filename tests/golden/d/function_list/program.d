int[] scale(int[] xs, int k) {
    int[] output;
    foreach (x; xs) output ~= x * k;
    return output;
}
