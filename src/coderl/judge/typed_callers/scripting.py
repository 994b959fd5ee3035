"""Callers for the dynamically typed languages ScaleBox judges function calls in: Lua, bash, R,
Racket, Verilog (literals follow the JSON values)."""

from __future__ import annotations

import re
from typing import Any

from coderl.judge.typed_callers.base import Untyped, escape


class Lua(Untyped):
    name = "lua"

    def string(self, text: str) -> str:  # Lua's \ddd is decimal
        return escape(text, lambda c: f"\\{c:03d}")

    def list_literal(self, items: list[str]) -> str:
        return "{" + ", ".join(items) + "}"

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = ",\n".join(f"  [{i}] = function() return {fn}({', '.join(a)}) end" for i, a in enumerate(cases))
        return code + "\n" + _LUA_MAIN.replace("CASES", calls)


_LUA_MAIN = r"""
do
  local cases = {
CASES
  }
  local function json(v)
    local t = type(v)
    if t == "boolean" then return tostring(v)
    elseif t == "number" then
      if math.type(v) == "integer" then return tostring(v) end
      if v ~= v or v == math.huge or v == -math.huge then return "null" end
      return string.format("%.17g", v)
    elseif t == "string" then
      return '"' .. v:gsub('[%c"\\]', function(c)
        if c == '"' or c == "\\" then return "\\" .. c end
        return string.format("\\u%04x", c:byte())
      end) .. '"'
    elseif t == "table" then
      local parts = {}
      for k = 1, #v do parts[k] = json(v[k]) end
      return "[" .. table.concat(parts, ",") .. "]"
    elseif t == "nil" then return "null" end
    return "!" .. t
  end
  local index, sig = io.read("n", "l")
  sig = sig:match("%S+")
  local payload = json(cases[index]())
  io.stdout:flush()
  io.stdout:write("\n" .. sig .. " " .. payload .. "\n")
  io.stdout:flush()
end
"""


class Bash(Untyped):
    """A bash function answers on its stdout: a number or true/false is sent as that JSON
    value, anything else as a JSON string (trailing newlines dropped, as ``$(...)`` does)."""

    name = "bash"

    def string(self, text: str) -> str:
        return "'" + text.replace("'", "'\\''") + "'"

    def literal(self, value: Any) -> str:
        if isinstance(value, list):
            raise ValueError("bash function calls take numbers, booleans and strings, not lists")
        return super().literal(value)

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = "".join(f"  {i}) coderl_out=$({fn} {' '.join(a)}) ;;\n" for i, a in enumerate(cases))
        return code + "\n" + _BASH_MAIN.replace("CASES", calls)


_BASH_MAIN = r"""
read -r coderl_index coderl_sig
case "$coderl_index" in
CASES  *) exit 3 ;;
esac
if [[ $coderl_out =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ || $coderl_out == true || $coderl_out == false ]]; then
  coderl_payload=$coderl_out
else
  coderl_payload=${coderl_out//\\/\\\\}
  coderl_payload=${coderl_payload//\"/\\\"}
  coderl_payload=${coderl_payload//$'\n'/\\n}
  coderl_payload=${coderl_payload//$'\t'/\\t}
  coderl_payload="\"$coderl_payload\""
fi
printf '\n%s %s\n' "$coderl_sig" "$coderl_payload"
"""


class R(Untyped):
    name = "r"
    true, false = "TRUE", "FALSE"

    def literal(self, value: Any) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            return f"{value}L" if abs(value) < 2**31 else f"{value}"
        return super().literal(value)

    def list_literal(self, items: list[str]) -> str:
        return "list(" + ", ".join(items) + ")"

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = ",\n".join(f"  function() {fn}({', '.join(a)})" for a in cases)
        return code + "\n" + _R_MAIN.replace("CASES", calls)


_R_MAIN = r"""
local({
  cases <- list(
CASES
  )
  json1 <- function(x) {
    if (is.null(x) || (length(x) == 1 && is.na(x))) return("null")
    if (is.logical(x)) return(if (x) "true" else "false")
    if (is.numeric(x)) {
      if (!is.finite(x)) return("null")
      if (x == round(x) && abs(x) < 1e15) return(format(x, scientific = FALSE))
      return(format(x, digits = 17))
    }
    if (is.character(x)) {
      x <- gsub("\\", "\\\\", x, fixed = TRUE); x <- gsub("\"", "\\\"", x, fixed = TRUE)
      x <- gsub("\n", "\\n", x, fixed = TRUE); x <- gsub("\t", "\\t", x, fixed = TRUE)
      return(paste0("\"", x, "\""))
    }
    paste0("!", class(x)[1])
  }
  json <- function(x) {
    if (is.list(x) || (is.atomic(x) && length(x) != 1))
      return(paste0("[", paste(vapply(as.list(x), json, ""), collapse = ","), "]"))
    json1(x)
  }
  head <- strsplit(trimws(readLines(file("stdin"), n = 1)), " ")[[1]]
  payload <- json(cases[[as.integer(head[1]) + 1]]())
  flush(stdout())
  cat("\n", head[2], " ", payload, "\n", sep = "")
})
"""


class Racket(Untyped):
    name = "racket"
    true, false = "#t", "#f"

    def list_literal(self, items: list[str]) -> str:
        return "(list " + " ".join(items) + ")"

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        if not re.match(r"\s*#lang\b", code):
            code = "#lang racket\n" + code
        calls = "\n".join(f"    [({i}) ({fn} {' '.join(a)})]" for i, a in enumerate(cases))
        return code + "\n" + _RACKET_MAIN.replace("CASES", calls)


_RACKET_MAIN = r"""
(module+ main
  (require (prefix-in coderl: json) (prefix-in coderl: racket/base))
  (define coderl-index (coderl:read))
  (define coderl-sig (coderl:symbol->string (coderl:read)))
  (define coderl-result
    (case coderl-index
CASES
    [else (coderl:exit 3)]))
  (define coderl-payload
    (with-handlers ([(lambda (e) #t) (lambda (e) "!value")])
      (coderl:jsexpr->string (if (coderl:and (coderl:rational? coderl-result) (coderl:exact? coderl-result))
                                 (if (coderl:integer? coderl-result) coderl-result (coderl:exact->inexact coderl-result))
                                 coderl-result))))
  (coderl:flush-output)
  (coderl:void (coderl:write-string (coderl:string-append "\n" coderl-sig " " coderl-payload "\n")))
  (coderl:flush-output))
"""


class Verilog(Untyped):
    """A Verilog ``function`` of integers: the caller is a module around it (unless the submission
    brings its own), the result printed as a decimal integer."""

    name = "verilog"

    def literal(self, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"verilog function calls take integers, not {value!r}")
        return str(value)

    def program(self, code: str, fn: str, cases: list[list[str]]) -> str:
        calls = "".join(f"      {i}: coderl_result = {fn}({', '.join(a)});\n" for i, a in enumerate(cases))
        main = _VERILOG_MAIN.replace("CASES", calls)
        if re.search(r"^\s*module\b", code, re.M):
            raise ValueError("verilog function calls take a bare function (the caller is its module)")
        return "module main;\n" + code + main + "endmodule\n"


_VERILOG_MAIN = r"""
  integer coderl_index, coderl_result, coderl_read;
  reg [8*80:1] coderl_sig;
  initial begin
    coderl_read = $fscanf(32'h8000_0000, "%d %s", coderl_index, coderl_sig);
    case (coderl_index)
CASES      default: $finish;
    endcase
    $display("");
    $display("%0s %0d", coderl_sig, coderl_result);
    $finish;
  end
"""
