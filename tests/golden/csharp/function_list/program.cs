using System.Collections.Generic;

public class Solution {
    public List<int> scale(int[] xs, int k) {
        var output = new List<int>();
        foreach (var x in xs) output.Add(x * k);
        return output;
    }
}
