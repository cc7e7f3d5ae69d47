//! engine (under construction in this commit series)
