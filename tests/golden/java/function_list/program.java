import java.util.*;

class Solution {
    public List<Integer> scale(int[] xs, int k) {
        List<Integer> out = new ArrayList<>();
        for (int x : xs) out.add(x * k);
        return out;
    }
}
