import org.junit.jupiter.api.Test;
import static org.junit.jupiter.api.Assertions.assertEquals;

public class Adder {
    public static int add(int a, int b) { return a - b; }
}

class AdderTest {
    @Test
    void small() { assertEquals(3, Adder.add(1, 2)); }

    @Test
    void negative() { assertEquals(0, Adder.add(-4, 4)); }
}
