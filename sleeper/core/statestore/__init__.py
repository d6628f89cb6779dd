"""The state of a table: file references and partitions, and the transactions that change them."""
