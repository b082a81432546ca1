"""File-level input checks (issue 9 item 16): pipes, unreadable and non-UTF-8 files give one clear error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from urbandp._records.readers import read_error_line
from urbandp.errors import InputError
from urbandp.fleet._pipeline import NoValidRecords, load_records

HEADER = "vehicle_id,timestamp,speed,latitude,longitude\n"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "feed.csv"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        load_records([fifo])


def test_an_unreadable_file_is_refused(tmp_path: Path) -> None:
    """As root (CI) the read runs as ``nobody``, for whom mode 000 means what it says."""
    import shutil
    import subprocess
    import sys

    from urbandp_process import shared_tmp, unprivileged

    if os.geteuid() != 0:
        p = tmp_path / "secret.csv"
        p.write_text(HEADER + "a,2016-11-24T09:00:00,1,30.2,-97.7\n")
        p.chmod(0)
        with pytest.raises(InputError, match="permission denied"):
            load_records([p])
        return
    code = (
        "import sys; from pathlib import Path; from urbandp.errors import InputError; "
        "from urbandp.fleet._pipeline import load_records\n"
        "try:\n    load_records([Path(sys.argv[1])])\nexcept InputError as err:\n    print(err); sys.exit(3)"
    )
    folder = shared_tmp()
    try:
        p = folder / "secret.csv"
        p.write_text(HEADER + "a,2016-11-24T09:00:00,1,30.2,-97.7\n")
        p.chmod(0)
        cmd = unprivileged([sys.executable, "-c", code, str(p)])
        if cmd is None:
            pytest.skip("root without setpriv or runuser: cannot read as an unprivileged user")
        res = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=folder, timeout=120)
        assert res.returncode == 3, (res.returncode, res.stderr[-2000:])
        assert "permission denied" in res.stdout and str(p) in res.stdout, res.stdout
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_latin1_csv_gives_one_line_without_polars_internals(tmp_path: Path) -> None:
    p = tmp_path / "latin.csv"
    p.write_bytes(HEADER.encode() + "b\xe9,2016-11-24T09:00:00,10,30.2,-97.7\n".encode("latin-1"))
    with pytest.raises(InputError) as info:
        load_records([p])
    message = str(info.value)
    assert "\n" not in message and "not UTF-8" in message and "iconv" in message


def test_read_error_line_hides_polars_internals() -> None:
    assert "__line" not in read_error_line(ValueError("can't broadcast Series '__line' of length 3"))
    assert read_error_line(ValueError("first\nsecond")) == "first"


def test_all_rows_quarantined_names_the_top_reasons(tmp_path: Path) -> None:
    rows = ["a,not-a-time,10,30.2,-97.7"] * 3 + ["b,2016-11-24T09:00:00,-1,30.2,-97.7"]
    p = tmp_path / "bad.csv"
    p.write_text(HEADER + "\n".join(rows) + "\n")
    loaded = load_records([p])  # the library returns the quarantine; the check is explicit
    assert loaded.quarantine.height == 4
    with pytest.raises(NoValidRecords) as info:
        loaded.require_valid()
    assert str(info.value).startswith(
        "all 4 records were quarantined (unparseable_timestamp 3, negative_speed 1); timestamps such as 'not-a-time'"
    )
    assert info.value.quarantine.height == 4
