//! bench (under construction in this commit series)
