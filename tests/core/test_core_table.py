"""``icml25.core.read_table``: the one tabular reader the rooms share."""

import numpy as np
import pytest

from icml25.core import TableError, read_table
from icml25.core.table import resolve_on_missing


def _w(tmp_path, text, name="t.csv", encoding="utf-8"):
    p = tmp_path / name
    p.write_text(text, encoding=encoding)
    return p


def test_semicolon_with_decimal_comma(tmp_path):
    t = read_table(_w(tmp_path, "income;model\n1,5;2,25\n-3,0;4\n"))
    assert (t.delimiter, t.decimal, t.columns) == (";", ",", ["income", "model"])
    assert t.numeric().X.tolist() == [[1.5, 2.25], [-3.0, 4.0]]


def test_tab_and_bom(tmp_path):
    t = read_table(_w(tmp_path, "\ufeffa\tb\n1.5\t2\n3\t4e-1\n", encoding="utf-8"))
    assert t.delimiter == "\t" and t.columns == ["a", "b"]  # no BOM glued to the first name
    assert t.numeric().X.tolist() == [[1.5, 2.0], [3.0, 0.4]]


def test_quoted_fields_keep_their_delimiters(tmp_path):
    t = read_table(_w(tmp_path, 'name,"y, in EUR",p\n"Smith, J",1.0,2\n"Doe",3,4\n'))
    assert t.columns == ["name", "y, in EUR", "p"]
    assert t.numeric(["y, in EUR", "p"]).X.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    rep = {r["name"]: r for r in t.column_report()}
    assert rep["name"]["type"] == "text" and rep["name"]["first_non_numeric"]["line"] == 2
    assert rep["p"]["type"] == "numeric"


def test_missing_tokens_and_policies(tmp_path):
    p = _w(tmp_path, 'y,p\n1,2\n"",3\nNA,4\nNaN,5\nnull,6\n?,7\n8,\n9,10\n')
    t = read_table(p)
    keep = t.numeric(on_missing="keep")
    assert np.isnan(keep.X[:, 0]).sum() == 5 and np.isnan(keep.X[:, 1]).sum() == 1
    drop = t.numeric(on_missing="drop")
    assert drop.X.tolist() == [[1.0, 2.0], [9.0, 10.0]]
    assert drop.dropped_lines == [3, 4, 5, 6, 7, 8]  # file lines, header = line 1
    assert drop.lines == [2, 9]
    assert drop.missing_by_column == {"y": 5, "p": 1}
    assert drop.to_dict()["column_types"] == [
        {"name": "y", "type": "numeric", "n_missing": 5, "n_values": 3},
        {"name": "p", "type": "numeric", "n_missing": 1, "n_values": 7}]
    rep = drop.dropped_report()
    assert "dropped 6 of 8 rows" in rep and "y 5, p 1" in rep
    with pytest.raises(TableError, match=r"line 3, column 'y' is missing \(an empty cell\)"):
        t.numeric(on_missing="error")
    # only the selected columns count
    assert t.numeric(["p"], on_missing="drop").dropped_lines == [8]
    assert {r["name"]: r["n_missing"] for r in t.column_report()} == {"y": 5, "p": 1}


def test_quoted_decimal_commas_and_crlf(tmp_path):
    p = tmp_path / "q.csv"
    p.write_bytes(b'y;p\r\n"1,5";"2,25"\r\n"-3,0";4\r\n')
    t = read_table(p)
    assert (t.delimiter, t.decimal) == (";", ",")
    assert t.numeric().X.tolist() == [[1.5, 2.25], [-3.0, 4.0]]


def test_tab_bom_crlf_and_more_missing_tokens(tmp_path):
    p = tmp_path / "b.tsv"
    p.write_bytes("\ufeffa\tb\r\n1.5\tN/A\r\n3\t None \r\n4\t5\r\nnan\t6\r\n".encode())
    t = read_table(p)
    assert t.columns == ["a", "b"]
    keep = t.numeric(on_missing="keep")
    assert np.isnan(keep.X).sum() == 3 and keep.X[2].tolist() == [4.0, 5.0]
    drop = t.numeric(on_missing="drop")
    assert drop.X.tolist() == [[4.0, 5.0]] and drop.dropped_lines == [2, 3, 5]


def test_other_encodings(tmp_path):
    for enc, name in (("utf-16", "u16.csv"), ("latin-1", "l1.csv")):
        p = tmp_path / name
        p.write_bytes("Einkommen;Prognose für\n1,5;2\n3;4,5\n".encode(enc))
        t = read_table(p)
        assert t.columns == ["Einkommen", "Prognose für"], enc
        assert t.numeric().X.tolist() == [[1.5, 2.0], [3.0, 4.5]], enc


def test_drop_that_leaves_nothing_is_an_error(tmp_path):
    t = read_table(_w(tmp_path, "a,b\n1,\n2,NA\n"))
    with pytest.raises(TableError, match="every one of the 2 rows has a missing value in "
                                         "\\['b'\\] .*a 0, b 2"):
        t.numeric(on_missing="drop")
    assert t.numeric(["a"], on_missing="drop").X.tolist() == [[1.0], [2.0]]


def test_errors_name_line_column_value(tmp_path):
    t = read_table(_w(tmp_path, "a,b\n1,2\n\n3,oops\n"))  # a blank line still counts
    with pytest.raises(TableError, match="line 4, column 2: 'oops' is not a number "
                                         "\\(column 'b'"):
        t.numeric()
    with pytest.raises(TableError, match="line 3 has 3 fields, expected 2"):
        read_table(_w(tmp_path, "a,b\n1,2\n1,2,3\n", "r.csv"))
    with pytest.raises(TableError, match="duplicate column"):
        read_table(_w(tmp_path, "a,a\n1,2\n", "d.csv"))
    with pytest.raises(TableError, match="no column\\(s\\) \\['z'\\]"):
        t.numeric(["z"])
    with pytest.raises(TableError, match="is empty"):
        read_table(_w(tmp_path, "\n\n", "e.csv"))
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_table(tmp_path / "nope.csv")


def test_headerless_and_forced_options(tmp_path):
    t = read_table(_w(tmp_path, "1,2\n3,NA\n"))
    assert not t.has_header and t.columns == ["x0", "x1"]
    assert t.numeric(on_missing="drop").dropped_lines == [2]
    t = read_table(_w(tmp_path, "a;b\n1.5;2\n", "f.csv"), delimiter=";", decimal=".")
    assert t.numeric().X.tolist() == [[1.5, 2.0]]


def test_resolve_on_missing():
    assert resolve_on_missing(None, False) == "error"
    assert resolve_on_missing(None, False, default="keep") == "keep"
    assert resolve_on_missing(None, True) == "drop"
    with pytest.raises(TableError, match="conflicts"):
        resolve_on_missing("keep", True)
    with pytest.raises(TableError, match="error\\|drop\\|keep"):
        resolve_on_missing("ignore", False)
    assert resolve_on_missing("drop", no_keep="why") == "drop"
    with pytest.raises(TableError, match="keep is not supported here: why"):
        resolve_on_missing(None, default="keep", no_keep="why")


def test_one_column_of_decimal_commas(tmp_path):
    t = read_table(_w(tmp_path, "loss\n0,5\nNA\n1,25\n"))
    assert t.columns == ["loss"] and t.decimal == ","
    assert t.numeric(on_missing="drop").X.ravel().tolist() == [0.5, 1.25]
    # two columns of integers stay two columns, and a ragged comma file is still an error
    assert read_table(_w(tmp_path, "a,b\n0,5\n1,2\n", "i.csv")).columns == ["a", "b"]
    with pytest.raises(TableError, match="line 3 has 1 fields, expected 2"):
        read_table(_w(tmp_path, "a,b\n1,2\n3\n", "r.csv"))


def test_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"y": [1.0, None, 3.0], "p": [1, 2, 3]}), p)
    t = read_table(p)
    assert t.columns == ["y", "p"]
    sel = t.numeric(on_missing="drop")
    assert sel.X.tolist() == [[1.0, 1.0], [3.0, 3.0]] and sel.dropped_lines == [2]
    with pytest.raises(TableError, match="row 2, column 'y' is missing"):
        t.numeric()


def test_docstring_example():
    import doctest

    import icml25.core.table as table

    result = doctest.testmod(table)
    assert result.attempted > 0 and result.failed == 0
