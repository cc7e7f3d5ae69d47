//! extract (under construction in this commit series)
