#include <vector>
class Solution {
public:
    std::vector<int> scale(const std::vector<int>& xs, int k) {
        std::vector<int> out;
        for (int x : xs) out.push_back(x * k);
        return out;
    }
};
