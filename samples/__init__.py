"""Small conversations written for hypermem (LoCoMo format), not taken from LoCoMo."""
