class P { static void Main() { var a = new byte[600 << 20]; for (int i = 0; i < a.Length; i += 4096) a[i] = 1; System.Console.WriteLine(a[4096]); } }
