//! SVG pictures of a summary (filled in below).
