"""The regression gate behind scripts/regress: run the suite, compare two results files, plot."""
