using System;
class P { static void Main() { var v = Console.ReadLine().Split() Console.WriteLine(v); } }
