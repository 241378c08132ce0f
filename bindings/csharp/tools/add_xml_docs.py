#!/usr/bin/env python3
"""Writes XML documentation into SWIG's generated C# proxies (SWIG 4.1 writes none for C#).

Usage: add_xml_docs.py HEADERS_DIR DPTRAIN_I CSHARP_I HAND_WRITTEN_SRC_DIR GENERATED_CS_DIR

Every public or protected member of a generated public type that has no `///` comment gets a <summary> taken
from the C API's Doxygen comment of what it wraps, plus a <remarks> naming that C symbol:
  - enums and their items: the C enum and items (names through dptrain.i's and csharp.i's %rename lines);
  - option and result properties: the C struct's field comments (SWIG's camelcase naming reversed);
  - constructors and methods: the %extend block in dptrain.i that defines them; its first dpt_* call names the
    C function whose @brief becomes the summary, and the block's own comment, if any, the remarks;
  - classes: the C typedef's comment, unless the hand-written half of the class (src/) documents it.
A member that none of these documents fails the build here, with its name: the C# compiler's CS1591 would
only say that it has no comment. Dispose and SWIG's plumbing get fixed texts.
"""
import html
import os
import re
import sys

COMMENT = r"/\*\*((?:(?!\*/).)*)\*/"  # a /** ... */ comment before a declaration
TRAILING = r"(?:/\*\*<((?:(?!\*/).)*)\*/)?"  # a /**< ... */ comment after one


def clean(doc):
    """The first paragraph of a Doxygen comment, before any @param/@return, as escaped XML text."""
    lines = [re.sub(r"^\s*\*? ?", "", line) for line in doc.strip().lstrip("<").splitlines()]
    text = []
    for line in lines:
        line = line.strip()
        # A block command (@param, @return) ends the paragraph; an inline @p/@c may begin a wrapped line.
        if line.startswith("@") and not re.match(r"@(?:brief\b|[pc] )", line):
            break
        if not line and text:
            break
        text.append(line.replace("@brief", "").strip())
    out = " ".join(t for t in text if t)
    out = re.sub(r"@[pc] (\w+)", r"\1", out)
    return html.escape(out, quote=False)


def parse_headers(folder):
    functions, types, enum_items, fields = {}, {}, {}, {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".h"):
            continue
        text = open(os.path.join(folder, name)).read()
        for m in re.finditer(COMMENT + r"\s*DPT_API\s[^;(]*?\b(dpt_\w+)\s*\(", text, re.S):
            functions[m.group(2)] = (clean(m.group(1)), name)
        for m in re.finditer(COMMENT + r"\s*typedef\s+(?:struct|enum)\s+(dpt_\w+)", text, re.S):
            types[m.group(2)] = clean(m.group(1))
        for m in re.finditer(r"typedef\s+(struct|enum)\s+(dpt_\w+)\s*\{(.*?)\}\s*\w+\s*;", text, re.S):
            kind, type_name, body = m.groups()
            if kind == "enum":
                item = (r"(?:" + COMMENT + r"\s*)?(DPT_\w+)\s*(?:=[^,/}]*)?,?[ \t]*" + TRAILING)
                for e in re.finditer(item, body, re.S):
                    doc = e.group(3) or e.group(1)
                    if doc:
                        enum_items[e.group(2)] = clean(doc)
            else:
                field = (r"(?:" + COMMENT + r"\s*)?[\w\s\*]*?\b(\w+)\s*(?:\[[^\]]*\])?\s*;[ \t]*" + TRAILING)
                for f in re.finditer(field, body, re.S):
                    doc = f.group(3) or f.group(1)
                    if doc:
                        fields[(type_name, f.group(2))] = clean(doc)
    return functions, types, enum_items, fields


def parse_renames(*paths):
    """C# name -> C name for the %rename(NewName) c_name; lines (types and enum items)."""
    renames = {}
    for path in paths:
        for m in re.finditer(r"%rename\((\w+)\)\s+(?:\w+::)?(\w+)\s*;", open(path).read()):
            renames.setdefault(m.group(1), m.group(2))
    return renames


def block_end(text, start):
    """Index just past the brace block that opens at text[start] == '{'."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def pick_call(struct, calls, functions):
    """The C API function a method wraps: the struct's own (dpt_trainer_create rather than the
    dpt_trainer_options_init it fills in first), else the first documented one it calls."""
    calls = [c for c in calls if c in functions]
    for wanted in (lambda c: c.startswith(struct + "_") and not c.endswith("_init"),
                   lambda c: c.startswith(struct + "_"), lambda c: True):
        chosen = [c for c in calls if wanted(c)]
        if chosen:
            return chosen[0]
    return None


def parse_extends(path, functions):
    """(C struct, method) -> list of (comment, C function it wraps) per overload, in order; plus the
    DPT_VALUE_STRUCT(TYPE, INIT) constructors: C struct -> init function (or None: zeroed)."""
    text = open(path).read()
    methods = {}
    for m in re.finditer(r"%extend\s+(dpt_\w+)\s*\{", text):
        struct = m.group(1)
        body = text[m.end():block_end(text, m.end() - 1) - 1]
        pos, pending = 0, ""
        member = re.compile(r"\s*(/\*(?:(?!\*/).)*\*/)"  # a comment, or a method: return type, name, arguments
                            r"|\s*(?:[\w:<>,]+[\s\*&]+)*?(~?\w+)\s*\(([^)]*)\)\s*(?:const\s*)?\{", re.S)
        while True:
            mm = member.match(body, pos)
            if not mm:
                nxt = body.find("\n", pos + 1)
                if nxt < 0:
                    break
                pos, pending = nxt, ""
                continue
            if mm.group(1):
                pending = mm.group(1)
                pos = mm.end()
                continue
            end = block_end(body, mm.end() - 1)
            call = pick_call(struct, re.findall(r"\b(dpt_\w+)\s*\(", body[mm.end():end]), functions)
            comment = re.sub(r"\s*\n\s*\*\s?", " ", pending[2:-2]).strip() if pending else ""
            if mm.group(2).startswith("~") or mm.group(2) in ("if", "for", "while", "switch"):
                pos, pending = end, ""
                continue
            methods.setdefault((struct, mm.group(2)), []).append((html.escape(comment, quote=False),
                                                                  call))
            pos, pending = end, ""
    value_struct = re.compile(r"^DPT_VALUE_STRUCT\((dpt_\w+),\s*(dpt_\w+_init)?", re.M)
    values = {m.group(1): m.group(2) for m in value_struct.finditer(text)}
    return methods, values


def camel(snake):
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_"))


def documented_in_src(src, class_name):
    for name in os.listdir(src):
        if name.endswith(".cs"):
            text = open(os.path.join(src, name)).read()
            declaration = r"///[^\n]*\n(?:\[[^\n]*\n)*public [\w ]*(?:class|struct|enum) " + class_name + r"\b"
            if re.search(declaration, text):
                return True
    return False


FIXED = {
    "finalizer": "Frees the native object if <see cref=\"Dispose()\"/> was not called: a safety net, not the plan.",
    "delegate": "SWIG's director plumbing (the native side calls back through it); not for use.",
    "Dispose()": "Frees the native object now; later calls do nothing. Every DPTrain object is IDisposable: "
                 "use <c>using</c>. The finalizer is only a safety net.",
    "ProgressListener.ProgressListener": "A listener for <see cref=\"Trainer.Fit\"/>: derive from it and "
                                         "override <see cref=\"OnProgress\"/>.",
    "ProgressListener.OnProgress": "Called with each progress report of <see cref=\"Trainer.Fit\"/>, on the "
                                   "thread that called Fit; <paramref name=\"progress\"/> is an owned copy, which "
                                   "the listener may keep. Return true to stop training after this report.",
    "Dispose(bool)": "Frees the native object (<paramref name=\"disposing\"/>: called from <see cref=\"Dispose()\"/> "
                     "rather than the finalizer).",
}


def main():
    headers, dptrain_i, csharp_i, src, generated = sys.argv[1:6]
    functions, types, enum_items, fields = parse_headers(headers)
    renames = parse_renames(dptrain_i, csharp_i)
    extends, value_structs = parse_extends(dptrain_i, functions)
    missing = []

    def function_doc(c_function, extra=""):
        brief, header = functions.get(c_function, ("", ""))
        remark = (extra + " " if extra else "") + "C API: <c>%s</c>%s." % (
            c_function, " (dptrain/%s)" % header if header else "")
        return brief or extra, remark

    for name in sorted(os.listdir(generated)):
        path = os.path.join(generated, name)
        lines = open(path).read().split("\n")
        type_match = next((re.match(r"public (?:unsafe |partial |static )*(class|enum) (\w+)", l) for l in lines
                           if re.match(r"public (?:unsafe |partial |static )*(class|enum) \w+", l)), None)
        if type_match is None:
            continue  # internal classes (the module class, dptrainPINVOKE)
        kind, cs_type = type_match.groups()
        c_type = renames.get(cs_type, cs_type)
        overloads_seen = {}
        out = []
        for i, line in enumerate(lines):
            prev = lines[i - 1].strip() if i else ""
            doc = None
            if prev.startswith("///") or prev.startswith("[") and i > 1 and lines[i - 2].strip().startswith("///"):
                out.append(line)
                continue
            indent = re.match(r"\s*", line).group(0)
            if re.match(r"public (?:unsafe |partial |static )*(class|enum) ", line):
                if not (kind == "class" and documented_in_src(src, cs_type)):
                    text = types.get(c_type)
                    doc = ("<summary>%s</summary>" % text) if text else None
                    if doc is None:
                        missing.append(cs_type)
            elif kind == "enum" and re.match(r"  (\w+)( = [^,]*)?,?$", line):
                item = re.match(r"  (\w+)", line).group(1)
                text = enum_items.get(renames.get(item, item))
                doc = ("<summary>%s</summary>" % text) if text else None
                if doc is None:
                    missing.append("%s.%s" % (cs_type, item))
            elif re.match(r"  ~\w+\(\)", line):
                doc = "<summary>%s</summary>" % FIXED["finalizer"]
            elif re.match(r"  public delegate ", line):
                doc = "<summary>%s</summary>" % FIXED["delegate"]
            elif re.match(r"  (public|protected) ", line):
                m = re.match(r"  (?:public|protected) (?:virtual |static |override |unsafe |new )*"
                             r"(?:([\w.<>\[\]]+) )?(\w+)\s*(\(|\{)", line)
                if m is None:
                    out.append(line)
                    continue
                ret, member, opener = m.groups()
                if member == "Dispose":
                    key = "Dispose()" if "()" in line else "Dispose(bool)"
                    doc = "<summary>%s</summary>" % FIXED[key]
                elif opener == "{" and ret is not None:  # a property over a struct field
                    field = next((f for (t, f) in fields if t == c_type and camel(f) == member), None)
                    text = fields.get((c_type, field)) if field else None
                    if text:
                        doc = "<summary>%s</summary><remarks>C API: <c>%s.%s</c>.</remarks>" % (text, c_type, field)
                else:
                    method = c_type if ret is None and member == cs_type else None
                    if method is None:
                        method = next((meth for (t, meth) in extends if t == c_type and
                                       (meth[:1].upper() + meth[1:] == member or renames.get(member) == meth)), None)
                    overloads = extends.get((c_type, method), [])
                    n = overloads_seen.get(member, 0)
                    overloads_seen[member] = n + 1
                    if overloads:
                        comment, call = overloads[min(n, len(overloads) - 1)]
                        summary, remark = function_doc(call, comment) if call else (comment, "")
                        if summary:
                            doc = "<summary>%s</summary>" % summary
                            if remark:
                                doc += "<remarks>%s</remarks>" % remark
                    elif method == c_type and c_type in value_structs:
                        init = value_structs[c_type]
                        if n == 1 and "(%s other)" % cs_type in line.replace("global::DPTrain.", ""):
                            doc = "<summary>A copy of <paramref name=\"other\"/>, owned by the new object.</summary>"
                        elif init:
                            summary, remark = function_doc(init)
                            doc = ("<summary>A new object holding the library's defaults.</summary>"
                                   "<remarks>%s %s</remarks>" % (summary, remark))
                        else:
                            doc = ("<summary>A new, empty object for a call to fill in (the library sets "
                                   "<c>struct_size</c>).</summary><remarks>C API: <c>%s</c>.</remarks>" % c_type)
                    elif "%s.%s" % (cs_type, member) in FIXED:
                        doc = "<summary>%s</summary>" % FIXED["%s.%s" % (cs_type, member)]
                if doc is None:
                    missing.append("%s.%s" % (cs_type, member))
            if doc is not None:
                out.append("%s/// %s" % (indent, doc))
            out.append(line)
        open(path, "w").write("\n".join(out))

    if missing:
        sys.stderr.write("add_xml_docs.py: no C API comment found for %d generated members (document the C "
                         "declaration, or the %%extend method in dptrain.i):\n  %s\n"
                         % (len(missing), "\n  ".join(missing)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
