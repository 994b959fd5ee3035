import org.junit.Test;
import static org.junit.Assert.assertEquals;

public class AdderTest {
    @Test
    public void small() { assertEquals(3, 1 + 2); }
}
