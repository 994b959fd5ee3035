using System;
class P { static void Main() { throw new InvalidOperationException("bad input"); } }
