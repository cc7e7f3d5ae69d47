#!/usr/bin/env python3
"""Golden triple counts for the RDF parser oracle (issue #15).

Reads the W3C Turtle, N-Triples, N-Quads and RDF/XML test suites as shipped
in rdflib's source distribution, takes their positive syntax and evaluation
tests from each manifest, and writes one line per test file:

    SUITE<TAB>FILE<TAB>COUNT

COUNT is the number of distinct triples (s, p, o) rdflib reads from the file
(graph names ignored: forager puts every statement of a document in the
document's own graph), or `rejected` when rdflib refuses the file.

Usage:
    pip download --no-deps --no-binary :all: rdflib==7.6.0 && tar xzf rdflib-7.6.0.tar.gz
    pip install rdflib==7.6.0
    python3 scripts/rdf-oracle.py rdflib-7.6.0/test/data/suites/w3c tests/data/w3c
"""
import shutil
import sys
from pathlib import Path

import rdflib
from rdflib import Namespace, RDF

MF = Namespace("http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#")
RDFT = Namespace("http://www.w3.org/ns/rdftest#")

SUITES = {
    # suite folder: (rdflib format, test types)
    "turtle": ("turtle", [RDFT.TestTurtlePositiveSyntax, RDFT.TestTurtleEval]),
    "ntriples": ("nt", [RDFT.TestNTriplesPositiveSyntax]),
    "nquads": ("nquads", [RDFT.TestNQuadsPositiveSyntax]),
    "rdf-xml": ("xml", [RDFT.TestXMLEval]),
}
BASE = "http://example.test/w3c/"
# RDF 1.1 compares literals by their lexical form; rdflib by default
# normalises them first ("1.000000000"^^xsd:decimal becomes "1.0"), which
# merges distinct triples (turtle-subm-26.ttl: 22 triples, its .nt says so).
rdflib.NORMALIZE_LITERALS = False


def actions(manifest: Path, types):
    g = rdflib.Graph()
    g.parse(manifest, format="turtle")
    for t in types:
        for test in g.subjects(RDF.type, t):
            action = g.value(test, MF.action)
            if action is not None:
                yield str(action)


def count(path: Path, fmt: str, base: str) -> str:
    ds = rdflib.Dataset()
    try:
        ds.parse(path, format=fmt, publicID=base)
    except Exception:  # rdflib refuses the file: not part of the oracle
        return "rejected"
    return str(len({(s, p, o) for s, p, o, _ in ds.quads((None, None, None, None))}))


def main(src: Path, dst: Path) -> None:
    lines = []
    for suite, (fmt, types) in SUITES.items():
        folder = src / suite
        manifest = folder / "manifest.ttl"
        for action in sorted(set(actions(manifest, types))):
            # Actions are IRIs under the suite's base: the shortest tail of
            # the IRI that names a file of the folder is its path.
            parts = action.split("/")
            found = [folder.joinpath(*parts[-k:]) for k in (1, 2, 3)]
            path = next((p for p in found if p.is_file()), None)
            if path is None:
                print(f"missing {suite}: {action}", file=sys.stderr)
                continue
            name = path.relative_to(folder).as_posix()
            (dst / suite / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dst / suite / name)
            lines.append(f"{suite}\t{name}\t{count(path, fmt, BASE + suite + '/' + name)}")
        # The manifest names the tests and carries the suite's licence header.
        shutil.copyfile(manifest, dst / suite / "manifest.ttl")
    (dst / "README").write_text(
        "W3C RDF test suites (Turtle, N-Triples, N-Quads, RDF/XML): the files of their\n"
        "positive syntax and evaluation tests, as shipped in rdflib "
        + rdflib.__version__
        + "'s source distribution\n(test/data/suites/w3c), with each suite's manifest.ttl. "
        "Distributed under both the W3C Test\nSuite License "
        "(http://www.w3.org/Consortium/Legal/2008/04-testsuite-license) and the W3C\n"
        "3-clause BSD License (http://www.w3.org/Consortium/Legal/2008/03-bsd-license),\n"
        "as each manifest.ttl says. golden.tsv: rdflib's distinct triple count per file\n"
        "(or `rejected`), written by scripts/rdf-oracle.py; tests/rdf_oracle.rs compares.\n"
    )
    (dst / "golden.tsv").write_text("".join(l + "\n" for l in lines))
    print(f"{len(lines)} files, rdflib {rdflib.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
