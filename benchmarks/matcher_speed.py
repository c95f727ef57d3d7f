"""Kept for old commands: the measurement is ``python -m langchain_tag_bench.matcher_speed``."""

if __name__ == "__main__":
    from langchain_tag_bench.matcher_speed import main

    raise SystemExit(main())
