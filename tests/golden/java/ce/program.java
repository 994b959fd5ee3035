public class Main { void f( }
