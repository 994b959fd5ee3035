using System;
using System.Collections.Generic;

public class APlusB {
    private static void Main() {
        string? line = Console.ReadLine();
        List<string?> seen = new List<string?>();
        int? missing = null;
        if (line != null) {
            string[] v = line.Split(' ');
            seen.Add("string? stays in a literal");
            Console.WriteLine(long.Parse(v[0]) + long.Parse(v[1]) + (missing ?? 0));
        }
    }
}
