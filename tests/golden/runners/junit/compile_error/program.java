import org.junit.jupiter.api.Test;

public class AdderTest {
    @Test
    void small() { int x = "three"; }
}
