import java.util.Scanner;
import org.javatuples.Pair;

// MultiPL-E's Java programs import org.javatuples: it is on the classpath.
public class Main {
    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        Pair<Long, Long> p = Pair.with(in.nextLong(), in.nextLong());
        System.out.println(p.getValue0() + p.getValue1());
    }
}
