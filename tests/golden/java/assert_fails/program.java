import java.util.Scanner;

// A failing `assert` is a runtime error: assertions are on (-ea), as SandboxFusion runs Java.
public class Main {
    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        long a = in.nextLong(), b = in.nextLong();
        assert a + b == 3 : "only 1 + 2 passes";
        System.out.println(a + b);
    }
}
