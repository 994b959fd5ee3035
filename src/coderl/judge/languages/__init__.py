"""The judge's knowledge of each language, one module per language (``java.py``: `JavaCaller`),
and the registry of the languages function-call tests are judged in.

Layering: each module here imports its language's sandbox class
(`coderl.sandbox.languages.<name>`, how to compile and run it) and holds what only the judge
needs (how to call a function in it: `caller.Caller`); its target-language source lives in
``coderl/judge/templates/<name>/``. The judge may import the sandbox, never the other way round:
the sandbox runs programs and knows nothing of judging, so its language classes stay free of
callers, and the one place to read a language's judging is this package's module, which
references the sandbox class as ``sandbox``. The registry is keyed by the sandbox's language name.
"""

from __future__ import annotations

from coderl.judge.languages.bash import BashCaller
from coderl.judge.languages.caller import Caller
from coderl.judge.languages.cpp import CppCaller
from coderl.judge.languages.csharp import CSharpCaller
from coderl.judge.languages.d import DCaller
from coderl.judge.languages.go import GoCaller
from coderl.judge.languages.java import JavaCaller
from coderl.judge.languages.javascript import JavaScriptCaller
from coderl.judge.languages.kotlin import KotlinCaller
from coderl.judge.languages.lua import LuaCaller
from coderl.judge.languages.perl import PerlCaller
from coderl.judge.languages.php import PhpCaller
from coderl.judge.languages.python import PythonCaller
from coderl.judge.languages.r import RCaller
from coderl.judge.languages.racket import RacketCaller
from coderl.judge.languages.ruby import RubyCaller
from coderl.judge.languages.rust import RustCaller
from coderl.judge.languages.scala import ScalaCaller
from coderl.judge.languages.typescript import TypeScriptCaller
from coderl.judge.languages.verilog import VerilogCaller

#: language name -> its function caller (a language missing here judges stdio tests only)
CALLERS: dict[str, Caller] = {caller.name: caller for caller in (
    PythonCaller(), JavaScriptCaller(), TypeScriptCaller(), PhpCaller(), RubyCaller(), PerlCaller(),
    JavaCaller(), CppCaller(), CSharpCaller(), GoCaller(), RustCaller(), DCaller(), ScalaCaller(), KotlinCaller(),
    LuaCaller(), BashCaller(), RCaller(), RacketCaller(), VerilogCaller())}

__all__ = ["CALLERS", "Caller"]
