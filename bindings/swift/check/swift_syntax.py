"""Parses Swift sources with the tree-sitter Swift grammar and reports syntax errors.

A syntax check only: no type checking, no name resolution (that needs a Swift
toolchain, which these machines cannot have). Prints "N passed, M failed" last.
Usage: python3 swift_syntax.py FILE...
"""
import sys

import tree_sitter
import tree_sitter_swift


def problems(tree):
    """Yields (line, column, kind) of every ERROR or MISSING node."""
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            kind = "missing " + node.type if node.is_missing else "syntax error"
            yield node.start_point[0] + 1, node.start_point[1] + 1, kind
        if node.has_error:
            stack.extend(node.children)


def main(paths):
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_swift.language()))
    passed = failed = 0
    for path in paths:
        with open(path, "rb") as f:
            tree = parser.parse(f.read())
        found = sorted(set(problems(tree)))
        if found:
            failed += 1
            print(f"FAIL {path}")
            for line, column, kind in found:
                print(f"    {path}:{line}:{column}: {kind}")
        else:
            passed += 1
            print(f"ok   {path}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
