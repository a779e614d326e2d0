#!/usr/bin/env python3
"""Builds the corpus tool pool (fixtures/corpus/tools/) from the BFCL data files.

Input: the wheel of the PyPI package bfcl-eval (a zip holding bfcl_eval/data/BFCL_v4_*.json, the
possible answers under bfcl_eval/data/possible_answer/ and the multi-turn function docs), e.g.
    pip download bfcl-eval==2026.3.23 --no-deps -d DIR
Output, in OUT_DIR (the rules are those of the corpus README, section `tools/`):
    tools.raw.jsonl        one tool per line as BFCL defines it, in the OpenAI wrapper
    tools.jsonl            the same tools with `parameters` normalized to JSON Schema
    cases.jsonl            one BFCL test case per line with its ground-truth calls
    rejected_calls.jsonl   ground-truth calls that do not validate against the normalized schema

Usage: scripts/bfcl-tools.py WHEEL OUT_DIR
Python 3.9+, standard library only. Exits non-zero with a message on any failure.
"""

import hashlib
import json
import os
import sys
import zipfile

DATA = "bfcl_eval/data/"

# The development split: these categories, whole, in this order.
DEV_CATEGORIES = [
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "simple_java",
    "live_simple",
    "live_parallel",
    "memory",
    "web_search",
]

# Categories whose cases carry no function list: their tools are the function docs of the
# backends that BFCL runs them against (memory runs on three backends, in this order).
BACKEND_DOCS = {
    "memory": ["memory_kv", "memory_vector", "memory_rec_sum"],
    "web_search": ["web_search"],
}

# What a case expects when it is not a list of ground-truth calls.
EXPECT_BY_CATEGORY = {
    "memory": "text_answer",
    "web_search": "text_answer",
    "irrelevance": "no_call",
    "live_irrelevance": "no_call",
    "live_relevance": "any_call",
}

# BFCL type names -> JSON Schema type names; None means "no type constraint" (key dropped).
TYPE_MAP = {
    "dict": "object",
    "HashMap": "object",
    "float": "number",
    "double": "number",
    "integer": "integer",
    "long": "integer",
    "short": "integer",
    "byte": "integer",
    "Bigint": "integer",
    "string": "string",
    "String": "string",
    "char": "string",
    "boolean": "boolean",
    "Boolean": "boolean",
    "array": "array",
    "Array": "array",
    "ArrayList": "array",
    "list": "array",
    "tuple": "array",
    "Set": "array",
    "any": None,
    "Any": None,
    "": None,
}

# In a list of acceptable values, this marks the argument as omittable.
OMITTED = ""


class ConvertError(Exception):
    """The input does not have the shape this converter knows."""


# ---------------------------------------------------------------- reading BFCL data


def read_jsonl(wheel, name):
    """The records of one JSON-lines data file of the wheel (blank lines skipped)."""
    try:
        text = wheel.read(DATA + name).decode("utf-8")
    except KeyError:
        raise ConvertError(f"{DATA}{name} is not in the wheel") from None
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def category_cases(wheel, category):
    """(case, ground truth or None, functions) for every case of a category, in file order."""
    cases = read_jsonl(wheel, f"BFCL_v4_{category}.json")
    answers = {}
    if category not in EXPECT_BY_CATEGORY:
        answers = {a["id"]: a["ground_truth"] for a in read_jsonl(wheel, f"possible_answer/BFCL_v4_{category}.json")}
    backend_functions = None
    if category in BACKEND_DOCS:
        backend_functions = []
        for doc in BACKEND_DOCS[category]:
            backend_functions += read_jsonl(wheel, f"multi_turn_func_doc/{doc}.json")
    for case in cases:
        functions = backend_functions if backend_functions is not None else case["function"]
        if category not in EXPECT_BY_CATEGORY and case["id"] not in answers:
            raise ConvertError(f"{category}: no possible answer for {case['id']}")
        yield case, answers.get(case["id"]), functions


# ---------------------------------------------------------------- tools


def canonical_json(value):
    """Key-sorted, compact, UTF-8 JSON: the text the tool id hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tool_id(function):
    """First 16 hex digits of sha256 of the raw function as canonical JSON."""
    return hashlib.sha256(canonical_json(function).encode("utf-8")).hexdigest()[:16]


def normalize_schema(schema):
    """A BFCL parameter schema as standard JSON Schema (a new dict, same key order)."""
    if not isinstance(schema, dict):
        raise ConvertError(f"a schema must be an object, not {schema!r}")
    out = {}
    for key, value in schema.items():
        if key == "optional":
            continue  # not a JSON Schema keyword; `required` already says it
        if key == "type":
            if not isinstance(value, str) or value not in TYPE_MAP:
                raise ConvertError(f"unknown BFCL type {value!r}")
            if TYPE_MAP[value] is not None:
                out[key] = TYPE_MAP[value]
        elif key == "properties":
            out[key] = {name: normalize_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = normalize_schema(value)
        else:
            out[key] = value
    return out


def normalize_function(function):
    """The function with standard JSON Schema parameters and without its `response`."""
    out = {k: v for k, v in function.items() if k != "response"}
    out["parameters"] = normalize_schema(function["parameters"])
    return out


class ToolPool:
    """Tools by id, each stored once with the categories it appears in."""

    def __init__(self):
        self.functions = {}
        self.categories = {}

    def add(self, function, category):
        """Registers a function seen in `category`; returns its id."""
        tid = tool_id(function)
        if tid not in self.functions:
            self.functions[tid] = function
            self.categories[tid] = []
        if category not in self.categories[tid]:
            self.categories[tid].append(category)
        return tid

    def records(self, normalized):
        """The tool lines, ordered by name then id."""
        order = sorted(self.functions, key=lambda tid: (self.functions[tid]["name"], tid))
        for tid in order:
            function = self.functions[tid]
            if normalized:
                function = normalize_function(function)
            yield {"id": tid, "type": "function", "function": function, "categories": self.categories[tid]}


# ---------------------------------------------------------------- validation


class Invalid:
    """One validation error: where in the instance, and what."""

    def __init__(self, path, message):
        self.path = path
        self.message = message

    def reason(self):
        where = "/".join(str(p) for p in self.path) or "(root)"
        return f"{where}: {self.message}"


def is_type(instance, name):
    """Whether a JSON value (as Python loads it) has a JSON Schema type."""
    if name == "null":
        return instance is None
    if name == "boolean":
        return isinstance(instance, bool)
    if name == "integer":
        if isinstance(instance, bool):
            return False
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    if name == "number":
        return isinstance(instance, (int, float)) and not isinstance(instance, bool)
    if name == "string":
        return isinstance(instance, str)
    if name == "array":
        return isinstance(instance, list)
    if name == "object":
        return isinstance(instance, dict)
    raise ConvertError(f"unknown JSON Schema type {name!r}")


def json_equal(a, b):
    """JSON equality: booleans differ from numbers, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return a == b


# Keywords that never make an instance invalid here.
ANNOTATIONS = {"description", "default", "format", "title", "examples", "$schema", "$comment"}


def errors(instance, schema, path=()):
    """The validation errors, in schema keyword order (as Python `jsonschema` reports them).

    Covers the assertion keywords BFCL tool schemas use; any other keyword is an error of the
    converter rather than a silent pass."""
    if schema is True or schema == {}:
        return
    if schema is False:
        yield Invalid(path, f"False schema does not allow {instance!r}")
        return
    for key, value in schema.items():
        yield from keyword_errors(key, value, instance, path)


def keyword_errors(key, value, instance, path):
    """The errors of one schema keyword (with its value) on `instance`."""
    if key in ANNOTATIONS:
        return
    if key == "type":
        names = [value] if isinstance(value, str) else value
        if not any(is_type(instance, n) for n in names):
            shown = ", ".join(repr(n) for n in names)
            yield Invalid(path, f"{instance!r} is not of type {shown}")
    elif key == "enum":
        if not any(json_equal(instance, each) for each in value):
            yield Invalid(path, f"{instance!r} is not one of {value!r}")
    elif key == "required":
        if isinstance(instance, dict):
            for name in value:
                if name not in instance:
                    yield Invalid(path, f"{name!r} is a required property")
    elif key == "properties":
        if isinstance(instance, dict):
            for name, sub in value.items():
                if name in instance:
                    yield from errors(instance[name], sub, path + (name,))
    elif key == "items":
        if isinstance(instance, list):
            for i, item in enumerate(instance):
                yield from errors(item, value, path + (i,))
    elif key in ("minimum", "maximum"):
        if is_type(instance, "number"):
            if key == "minimum" and instance < value:
                yield Invalid(path, f"{instance!r} is less than the minimum of {value!r}")
            if key == "maximum" and instance > value:
                yield Invalid(path, f"{instance!r} is greater than the maximum of {value!r}")
    else:
        raise ConvertError(f"the validator does not know the keyword {key!r}")


def first_error(instance, schema):
    """The error at the smallest instance path (paths compared element by element, a prefix
    first), the first reported among equals; None when the instance is valid. This is the error
    listed first by `sorted(validator.iter_errors(instance), key=lambda e: e.path)` in Python
    `jsonschema`, the order the shared corpus reports."""
    first = None
    for e in errors(instance, schema):
        if first is None or list(e.path) < list(first.path):
            first = e
    return first


def is_valid(instance, schema):
    """Whether the instance validates against the schema."""
    return next(errors(instance, schema), None) is None


# ---------------------------------------------------------------- ground truth -> calls


def is_candidate_dict(value):
    """BFCL writes a nested object argument as a dict of lists of acceptable values."""
    return isinstance(value, dict) and all(isinstance(v, list) for v in value.values())


def resolve(value, schema):
    """A literal value from one acceptable value: nested candidate dicts resolved too."""
    if is_candidate_dict(value):
        return resolve_arguments(value, schema.get("properties", {}) if isinstance(schema, dict) else {})
    if isinstance(value, list):
        items = schema.get("items", {}) if isinstance(schema, dict) else {}
        return [resolve(v, items) for v in value]
    return value


def resolve_arguments(candidates, properties):
    """Arguments from `{name: [acceptable values]}`: for each, the first value that fits its
    schema; an omittable argument none of whose values fit, or one without values, is left out;
    otherwise the first value (and the call will not validate)."""
    arguments = {}
    for name, values in candidates.items():
        schema = properties.get(name, {})
        listed = [resolve(v, schema) for v in values if not (isinstance(v, str) and v == OMITTED)]
        fitting = [v for v in listed if is_valid(v, schema)]
        if fitting:
            arguments[name] = fitting[0]
        elif listed and OMITTED not in values:
            arguments[name] = listed[0]
    return arguments


def ground_truth_calls(case_id, ground_truth, tools):
    """(calls, rejected) from a possible answer: `tools` maps each offered name to its
    normalized function; a rejected entry is (call, reason)."""
    calls, rejected = [], []
    for entry in ground_truth:
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ConvertError(f"{case_id}: a ground-truth call must be a one-key object")
        ((name, candidates),) = entry.items()
        if name not in tools:
            raise ConvertError(f"{case_id}: the ground truth calls {name!r}, which is not offered")
        parameters = tools[name]["parameters"]
        call = {"name": name, "arguments": resolve_arguments(candidates, parameters.get("properties", {}))}
        error = first_error(call["arguments"], parameters)
        if error is None:
            calls.append(call)
        else:
            rejected.append((call, error.reason()))
    return calls, rejected


# ---------------------------------------------------------------- the whole conversion


def convert(wheel):
    """(raw tools, normalized tools, cases, rejected calls) as lists of records."""
    pool = ToolPool()
    cases, rejected_calls = [], []
    for category in DEV_CATEGORIES:
        for case, ground_truth, functions in category_cases(wheel, category):
            tool_ids = [pool.add(f, category) for f in functions]
            record = {"id": case["id"], "category": category, "tool_ids": tool_ids, "calls": []}
            record["expect"] = EXPECT_BY_CATEGORY.get(category, "calls")
            if ground_truth is not None:
                offered = {f["name"]: normalize_function(f) for f in functions}
                calls, rejected = ground_truth_calls(case["id"], ground_truth, offered)
                record["calls"] = calls
                if rejected:
                    record["calls_rejected"] = len(rejected)
                for call, reason in rejected:
                    rejected_calls.append({"id": case["id"], "category": category, "call": call, "reason": reason})
            cases.append(record)
    return list(pool.records(False)), list(pool.records(True)), cases, rejected_calls


def write_jsonl(path, records):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def main(argv):
    if len(argv) != 3:
        print("usage: scripts/bfcl-tools.py WHEEL OUT_DIR", file=sys.stderr)
        return 2
    wheel_path, out_dir = argv[1], argv[2]
    try:
        with zipfile.ZipFile(wheel_path) as wheel:
            raw, normalized, cases, rejected = convert(wheel)
    except KeyError as e:
        print(f"bfcl-tools: {wheel_path}: a BFCL record has no field {e}", file=sys.stderr)
        return 1
    except (OSError, zipfile.BadZipFile, ValueError, ConvertError) as e:
        print(f"bfcl-tools: {wheel_path}: {e}", file=sys.stderr)
        return 1
    os.makedirs(out_dir, exist_ok=True)
    write_jsonl(os.path.join(out_dir, "tools.raw.jsonl"), raw)
    write_jsonl(os.path.join(out_dir, "tools.jsonl"), normalized)
    write_jsonl(os.path.join(out_dir, "cases.jsonl"), cases)
    write_jsonl(os.path.join(out_dir, "rejected_calls.jsonl"), rejected)
    calls = sum(len(c["calls"]) for c in cases)
    print(f"bfcl-tools: {len(raw)} tools, {len(cases)} cases, {calls} calls, {len(rejected)} rejected", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
