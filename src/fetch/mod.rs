//! fetch (under construction in this commit series)
