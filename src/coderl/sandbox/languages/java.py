from __future__ import annotations

import re

from coderl.sandbox.languages import jvm

_PUBLIC_CLASS = re.compile(r"^\s*public\s+(?:final\s+|abstract\s+)*class\s+([A-Za-z_$][\w$]*)", re.M)


# What SandboxFusion puts on the classpath: javatuples (MultiPL-E's Java imports org.javatuples;
# Debian's libjavatuples-java, read-only under /usr) and any jar the request's files bring (``*``:
# the jars in the work dir, expanded by the java and javac launchers).
CLASSPATH = "classes:/usr/share/java/javatuples.jar:*"
#: what javac compiles once to make its class-data archive: the language features and library a
#: competitive program uses, so the compiler classes they need are in the archive
_SAMPLE = """import java.io.*;
import java.util.*;
import java.util.stream.*;
public class Main {
    record Edge(int to, long w) {}
    interface Op { long apply(long a, long b); }
    static <T extends Comparable<T>> T best(List<T> xs) { return Collections.max(xs); }
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringTokenizer st = new StringTokenizer(in.readLine() + " 1");
        Scanner sc = new Scanner("1 2");
        int n = Integer.parseInt(st.nextToken()) + sc.nextInt();
        long[] a = new long[n];
        Map<Integer, List<Edge>> g = new HashMap<>();
        PriorityQueue<long[]> pq = new PriorityQueue<>((x, y) -> Long.compare(x[0], y[0]));
        TreeMap<Long, Integer> seen = new TreeMap<>();
        Deque<Integer> dq = new ArrayDeque<>();
        Op add = (x, y) -> x + y;
        for (int i = 0; i < n; i++) {
            a[i] = add.apply(i, 1);
            g.computeIfAbsent(i, k -> new ArrayList<>()).add(new Edge(i, a[i]));
            pq.add(new long[] {a[i], i});
            seen.merge(a[i], 1, Integer::sum);
            dq.addLast(i);
        }
        List<Long> sorted = Arrays.stream(a).boxed().sorted(Comparator.reverseOrder()).collect(Collectors.toList());
        StringBuilder sb = new StringBuilder();
        switch (n % 3) {
            case 0 -> sb.append("zero");
            default -> sb.append(String.format("%d %.2f", best(sorted), Math.sqrt(n)));
        }
        try { sb.append(new java.math.BigInteger("12345").pow(3)); } catch (ArithmeticException e) { throw e; }
        PrintWriter out = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out)));
        out.println(sb + " " + pq.size() + " " + seen.firstKey() + " " + dq.peekFirst() + " " + g.size());
        out.flush();
    }
}
"""


class Java(jvm.ArchivedCompiler):
    """The file is named after the public class (Main when there is none); the JVM gets a heap
    cap from the memory limit and a serial GC so it starts few threads. Assertions are on
    (``-ea``), as SandboxFusion runs Java: MultiPL-E's Java tests are ``assert`` statements.
    javac starts on a class-data archive of its own classes and with the client compiler only
    (`jvm.ArchivedCompiler`; 0.87 -> 0.38 CPU s for a small program on this VM)."""

    name = "java"
    source_name = "Main.java"
    compile_argv = ("/usr/bin/javac", "-J-Xss64m", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1",
                    "-J-XX:-UsePerfData", "-encoding", "UTF-8", "-cp", CLASSPATH, "-d", "classes", "{src}")
    run_argv = ("/usr/bin/java", "-ea", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss64m",
                "-Xmx{memory_mb}m", "-XX:-UsePerfData", "-Xshare:auto", "-cp", CLASSPATH, "{main}")
    artifacts = ("classes",)
    compiler_jars = ()
    compiler_sample = _SAMPLE
    compiler_option_prefix = "-J"
    version_argv = ("java", "-version")
    memory_error_markers = ("java.lang.OutOfMemoryError",)
    memory_overhead_mb = 192
    hello = 'public class Main { public static void main(String[] a) { System.out.println("hello, coderl"); } }\n'

    @classmethod
    def source_for(cls, source: str) -> tuple[str, str]:
        match = _PUBLIC_CLASS.search(source)
        return (f"{match.group(1)}.java" if match else cls.source_name), source
