"""Callers for the managed languages: Java, C#, Scala, Kotlin (the submission wrapped in a class
or object unless it brings its ``Solution``; the return value serialised by runtime type)."""

from __future__ import annotations

import re

from coderl.judge.typed_callers.base import (
    NameColonType,
    Typed,
    array_or_generic,
    c_string,
    kind_of,
    u4_string,
)

_JAVA_KINDS = {"int": "int", "Integer": "int", "short": "int", "byte": "int", "long": "long", "Long": "long",
               "double": "float", "Double": "float", "float": "float", "Float": "float", "boolean": "bool",
               "Boolean": "bool", "String": "str", "char": "char", "Character": "char"}


class Java(Typed):
    name = "java"
    defaults = {"int": "int", "float": "double", "bool": "boolean", "str": "String", "list": "{}[]"}
    signature = re.compile(r"[\w<>\[\]?,\s]+?\s+NAME\s*\((?P<params>[^)]*)\)")
    string = staticmethod(c_string)

    def elem(self, type_: str) -> str | None:
        return array_or_generic(type_, "List|ArrayList|Collection|Iterable")

    def kind(self, type_: str) -> str:
        return kind_of(type_, _JAVA_KINDS)

    def list_literal(self, type_: str, items: list[str]) -> str:
        if type_.strip().endswith("[]"):
            return f"new {type_}{{{', '.join(items)}}}"
        return f"new java.util.ArrayList<>(java.util.Arrays.asList({', '.join(items)}))" if items \
            else "new java.util.ArrayList<>()"

    def number_suffix(self, text: str, kind: str) -> str:
        return text + ("L" if kind == "long" else "")

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        imports = "".join(re.findall(r"^\s*import\s+[\w.*\s]+;\s*$\n?", code, re.M))
        body = re.sub(r"^\s*import\s+[\w.*\s]+;\s*$", "", code, flags=re.M)
        target = "Solution" if re.search(r"\bclass\s+Solution\b", body) else "CoderlTarget"
        dispatch = "".join(f"      case {i}: return new {target}().{fn}({', '.join(a)});\n"
                           for i, a in enumerate(cases))
        if target == "Solution":
            body = re.sub(r"\bpublic\s+(?=(final\s+)?class\s+Solution\b)", "", body)
        else:
            body = f"class CoderlTarget {{\n{body}\n}}\n"
        return ("import java.util.*;\nimport java.util.stream.*;\n" + imports + body + _JAVA_MAIN
                .replace("DISPATCH", dispatch))


_JAVA_MAIN = r"""
public class Main {
  static Object coderlCall(int i) throws Exception {
    switch (i) {
DISPATCH      default: throw new IllegalArgumentException("no case " + i);
    }
  }
  static void coderlJson(StringBuilder b, Object o) {
    if (o == null) { b.append("null"); }
    else if (o instanceof Boolean || o instanceof Integer || o instanceof Long || o instanceof Short
             || o instanceof Byte || o instanceof java.math.BigInteger) { b.append(o); }
    else if (o instanceof Number) {
      double d = ((Number) o).doubleValue();
      b.append(Double.isFinite(d) ? Double.toString(d) : "null");
    }
    else if (o instanceof CharSequence || o instanceof Character) { coderlString(b, o.toString()); }
    else if (o.getClass().isArray()) {
      b.append('[');
      for (int k = 0; k < java.lang.reflect.Array.getLength(o); k++) {
        if (k > 0) b.append(',');
        coderlJson(b, java.lang.reflect.Array.get(o, k));
      }
      b.append(']');
    }
    else if (o instanceof Iterable) {
      b.append('['); boolean first = true;
      for (Object x : (Iterable<?>) o) { if (!first) b.append(','); first = false; coderlJson(b, x); }
      b.append(']');
    }
    else { b.append("!").append(o.getClass().getSimpleName().replaceAll("\\s", "")); }
  }
  static void coderlString(StringBuilder b, String s) {
    b.append('"');
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 32) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    b.append('"');
  }
  public static void main(String[] args) throws Exception {
    java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
    String[] head = in.readLine().trim().split(" ");
    Object result = coderlCall(Integer.parseInt(head[0]));
    StringBuilder b = new StringBuilder("\n").append(head[1]).append(' ');
    coderlJson(b, result);
    System.out.flush();
    java.io.PrintStream out = new java.io.PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
    out.print(b.append('\n'));
    out.flush();
  }
}
"""


_CS_KINDS = {"int": "int", "Int32": "int", "short": "int", "byte": "int", "long": "long", "Int64": "long",
             "double": "float", "float": "float", "decimal": "float", "bool": "bool", "Boolean": "bool",
             "string": "str", "String": "str", "char": "char"}


class CSharp(Typed):
    name = "csharp"
    defaults = {"int": "int", "float": "double", "bool": "bool", "str": "string", "list": "{}[]"}
    signature = re.compile(r"[\w<>\[\],?\s]+?\s+NAME\s*\((?P<params>[^)]*)\)")
    string = staticmethod(u4_string)

    def elem(self, type_: str) -> str | None:
        return array_or_generic(type_, "List|IList|IEnumerable|ICollection|IReadOnlyList")

    def kind(self, type_: str) -> str:
        return kind_of(type_, _CS_KINDS)

    def list_literal(self, type_: str, items: list[str]) -> str:
        type_ = type_.strip()
        concrete = type_ if type_.endswith("[]") else f"List<{self.elem(type_)}>"
        return f"new {concrete}{{{', '.join(items)}}}"

    def number_suffix(self, text: str, kind: str) -> str:
        return text + ("L" if kind == "long" else "")

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        usings = "".join(re.findall(r"^\s*using\s+[\w.=\s]+;\s*$\n?", code, re.M))
        body = re.sub(r"^\s*using\s+[\w.=\s]+;\s*$", "", code, flags=re.M)
        static = re.search(r"\bstatic\b[^;{(]*\b" + re.escape(fn) + r"\s*\(", body) is not None
        if re.search(r"\bclass\s+Solution\b", body):
            target = "Solution" if static else "new Solution()"
        else:
            body = f"public class CoderlTarget {{\n{body}\n}}\n"
            target = "CoderlTarget" if static else "new CoderlTarget()"
        dispatch = "".join(f"      case {i}: return {target}.{fn}({', '.join(a)});\n" for i, a in enumerate(cases))
        return ("using System;\nusing System.Collections.Generic;\nusing System.Linq;\nusing System.Text;\n"
                + usings + body + _CS_MAIN.replace("DISPATCH", dispatch))


_CS_MAIN = r"""
public static class CoderlMain {
  static object Call(int i) {
    switch (i) {
DISPATCH      default: throw new System.ArgumentException("no case " + i);
    }
  }
  static void Json(System.Text.StringBuilder b, object o) {
    if (o == null) b.Append("null");
    else if (o is bool) b.Append((bool) o ? "true" : "false");
    else if (o is string || o is char) Str(b, o.ToString());
    else if (o is double || o is float || o is decimal) {
      double d = System.Convert.ToDouble(o);
      b.Append(double.IsNaN(d) || double.IsInfinity(d) ? "null" : d.ToString("R", System.Globalization.CultureInfo.InvariantCulture));
    }
    else if (o is System.IConvertible) b.Append(System.Convert.ToString(o, System.Globalization.CultureInfo.InvariantCulture));
    else if (o is System.Collections.IEnumerable) {
      b.Append('['); bool first = true;
      foreach (object x in (System.Collections.IEnumerable) o) { if (!first) b.Append(','); first = false; Json(b, x); }
      b.Append(']');
    }
    else b.Append("!" + o.GetType().Name);
  }
  static void Str(System.Text.StringBuilder b, string s) {
    b.Append('"');
    foreach (char c in s) {
      if (c == '"' || c == '\\') b.Append('\\').Append(c);
      else if (c < 32) b.Append(string.Format("\\u{0:x4}", (int) c));
      else b.Append(c);
    }
    b.Append('"');
  }
  public static void Main() {
    string[] head = System.Console.In.ReadLine().Trim().Split(' ');
    object result = Call(int.Parse(head[0]));
    var b = new System.Text.StringBuilder("\n").Append(head[1]).Append(' ');
    Json(b, result);
    System.Console.Out.Flush();
    var raw = System.Console.OpenStandardOutput();
    byte[] bytes = new System.Text.UTF8Encoding(false).GetBytes(b.Append('\n').ToString());
    raw.Write(bytes, 0, bytes.Length);
    raw.Flush();
  }
}
"""


_SCALA_KINDS = {"Int": "int", "Short": "int", "Byte": "int", "Long": "long", "Double": "float", "Float": "float",
                "Boolean": "bool", "String": "str", "Char": "char", "BigInt": "int"}


class Scala(NameColonType):
    name = "scala"
    defaults = {"int": "Int", "float": "Double", "bool": "Boolean", "str": "String", "list": "List[{}]"}
    signature = re.compile(r"\bdef\s+NAME\s*(?:\[[^\]]*\])?\s*\((?P<params>[^)]*)\)")
    string = staticmethod(c_string)

    def elem(self, type_: str) -> str | None:
        match = re.fullmatch(r"(?:Array|List|Seq|Vector|IndexedSeq)\s*\[(.+)\]", type_.strip())
        return match.group(1) if match else None

    def kind(self, type_: str) -> str:
        return kind_of(type_, _SCALA_KINDS)

    def list_literal(self, type_: str, items: list[str]) -> str:
        outer = type_.strip().split("[", 1)[0].strip()
        return f"{outer}[{self.elem(type_)}]({', '.join(items)})"

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        if re.search(r"\bobject\s+Solution\b", code):
            call, body = f"Solution.{fn}", code
        elif re.search(r"\bclass\s+Solution\b", code):
            call, body = f"new Solution().{fn}", code
        else:
            call, body = f"CoderlTarget.{fn}", f"object CoderlTarget {{\n{code}\n}}\n"
        dispatch = "".join(f"      case {i} => {call}({', '.join(a)})\n" for i, a in enumerate(cases))
        return _SCALA_MAIN.replace("DISPATCH", dispatch) + body


_SCALA_MAIN = r"""object Main {
  def coderlCall(i: Int): Any = i match {
DISPATCH      case _ => sys.exit(3)
  }
  def coderlJson(o: Any): String = o match {
    case null => "null"
    case b: Boolean => b.toString
    case n @ (_: Int | _: Long | _: Short | _: Byte | _: BigInt) => n.toString
    case d: Double => if (d.isNaN || d.isInfinite) "null" else d.toString
    case f: Float => coderlJson(f.toDouble)
    case c: Char => coderlJson(c.toString)
    case s: String => "\"" + s.flatMap {
      case '"' => "\\\""
      case '\\' => "\\\\"
      case c if c < ' ' => "\\u%04x".format(c.toInt)
      case c => c.toString
    } + "\""
    case a: Array[_] => coderlJson(a.toSeq)
    case it: Iterable[_] => it.map(coderlJson).mkString("[", ",", "]")
    case other => "!" + other.getClass.getSimpleName
  }
  def main(args: Array[String]): Unit = {
    val head = scala.io.StdIn.readLine().trim.split(" ")
    val payload = coderlJson(coderlCall(head(0).toInt))
    Console.out.flush()
    val out = new java.io.PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8")
    out.print("\n" + head(1) + " " + payload + "\n")
    out.flush()
  }
}
"""

_KOTLIN_ARRAYS = {"IntArray": "Int", "LongArray": "Long", "DoubleArray": "Double", "BooleanArray": "Boolean",
                  "CharArray": "Char"}


class Kotlin(NameColonType):
    name = "kotlin"
    defaults = {"int": "Int", "float": "Double", "bool": "Boolean", "str": "String", "list": "List<{}>"}
    signature = re.compile(r"\bfun\s+(?:<[^>]*>\s*)?NAME\s*\((?P<params>[^)]*)\)")

    def string(self, text: str) -> str:
        return u4_string(text).replace("$", "\\$")

    def elem(self, type_: str) -> str | None:
        type_ = type_.strip()
        if type_ in _KOTLIN_ARRAYS:
            return _KOTLIN_ARRAYS[type_]
        match = re.fullmatch(r"(?:Array|List|MutableList|ArrayList|Collection|Iterable)\s*<(.+)>", type_)
        return match.group(1) if match else None

    def kind(self, type_: str) -> str:
        return kind_of(type_, _SCALA_KINDS)

    def list_literal(self, type_: str, items: list[str]) -> str:
        type_ = type_.strip()
        if type_ in _KOTLIN_ARRAYS:
            return f"{type_[0].lower()}{type_[1:-5]}ArrayOf({', '.join(items)})"
        maker = {"Array": "arrayOf", "MutableList": "mutableListOf", "ArrayList": "arrayListOf"}.get(
            type_.split("<", 1)[0].strip(), "listOf")
        return f"{maker}<{self.elem(type_)}>({', '.join(items)})"

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        call = f"Solution().{fn}" if re.search(r"\bclass\s+Solution\b", code) else fn
        dispatch = "".join(f"        {i} -> {call}({', '.join(a)})\n" for i, a in enumerate(cases))
        return code + "\n" + _KOTLIN_MAIN.replace("DISPATCH", dispatch)


_KOTLIN_MAIN = r"""
private fun coderlJson(o: Any?): String = when (o) {
    null -> "null"
    is Boolean, is Int, is Long, is Short, is Byte -> o.toString()
    is Double -> if (o.isNaN() || o.isInfinite()) "null" else o.toString()
    is Float -> coderlJson(o.toDouble())
    is Char -> coderlJson(o.toString())
    is String -> o.map { c -> when {
        c == '"' -> "\\\""
        c == '\\' -> "\\\\"
        c < ' ' -> String.format("\\u%04x", c.toInt())
        else -> c.toString()
    } }.joinToString("", "\"", "\"")
    is IntArray -> coderlJson(o.toList())
    is LongArray -> coderlJson(o.toList())
    is DoubleArray -> coderlJson(o.toList())
    is BooleanArray -> coderlJson(o.toList())
    is CharArray -> coderlJson(o.toList())
    is Array<*> -> coderlJson(o.toList())
    is Iterable<*> -> o.joinToString(",", "[", "]") { coderlJson(it) }
    else -> "!" + o.javaClass.simpleName
}

fun main() {
    val head = readLine()!!.trim().split(" ")
    val result: Any? = when (head[0].toInt()) {
DISPATCH        else -> kotlin.system.exitProcess(3)
    }
    val payload = coderlJson(result)
    System.out.flush()
    val out = java.io.PrintStream(java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8")
    out.print("\n" + head[1] + " " + payload + "\n")
    out.flush()
}
"""
