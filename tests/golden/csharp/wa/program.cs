using System;
class P { static void Main() { var v = Console.ReadLine().Split(); Console.WriteLine(long.Parse(v[0]) * long.Parse(v[1])); } }
