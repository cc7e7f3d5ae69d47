//! output (under construction in this commit series)
