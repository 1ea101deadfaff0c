"""incidents: network incidents on FRR labs of every topology family (levels 6-8).

Under construction (issue 28): faults/kinds.py is the catalogue's contract.
"""
