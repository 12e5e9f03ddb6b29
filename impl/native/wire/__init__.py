"""kcoord-wire\x27s Python side: the generator of its Rust wire codec (`gen_codec`)."""
