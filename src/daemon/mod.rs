//! daemon (under construction in this commit series)
