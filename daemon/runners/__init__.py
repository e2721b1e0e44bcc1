"""Runner processes: one subprocess per loaded model, spoken to over its pipes."""
