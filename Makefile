.PHONY: all test integration_tests lint format

# The unit tests (fakes, offline, fast) of the package and the benchmark.
all: lint test

test:
	python -m pytest tests/unit_tests benchmarks/bench_tests/unit_tests

# The slow runs on the embedded local model (the `local` extra).
integration_tests:
	python -m pytest tests/integration_tests benchmarks/bench_tests/integration_tests

lint:
	ruff check .
	ruff format --check .
	mypy langchain_tag

format:
	ruff format .
	ruff check --fix .
