"""Apache Kafka 4.0 as the reference peer: the Maven project that pins it (`pom.xml`), the launcher of a real KRaft
cluster from its jars (`broker.py`). Nothing in `kcoord.impl` knows this exists."""
