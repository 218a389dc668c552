"""A tiny retrieval dataset written in BEIR's on-disk format (corpus, queries, qrels per split)."""

from __future__ import annotations

import json
from pathlib import Path

# The smallest ColBERT run on the folder `write_beir` makes: short texts keep MiniLM fast, and
# eval_corpus=full searches all its documents. Add `trainer.limit_train_batches=N`.
COLBERT_TINY = [
    "experiment=colbert_stdlib",
    "data=beir",
    "data.batch_size=4",
    "data.eval_corpus=full",
    "model.net.max_length_document=48",
    "model.net.embedding_size=32",
    "trainer.max_epochs=1",
    "trainer.enable_progress_bar=false",
    "trainer.enable_model_summary=false",
    "logger=none",
]

# (topic words for the query, document text): each query's positive shares its topic.
TOPICS = [
    ("sort a list of numbers", "def sort_numbers(values): return sorted(values)"),
    ("open a network socket", "def connect(host, port): return socket.create_connection(host)"),
    ("read a json file", "def load(path): return json.loads(open(path).read())"),
    (
        "compute the sha256 hash of bytes",
        "def digest(data): return hashlib.sha256(data).hexdigest()",
    ),
    ("parse a date string", "def parse_day(text): return datetime.strptime(text, '%Y-%m-%d')"),
    ("copy a directory tree", "def copy_tree(src, dst): shutil.copytree(src, dst)"),
    ("count words in text", "def word_counts(text): return collections.Counter(text.split())"),
    ("compress data with gzip", "def pack(data): return gzip.compress(data)"),
    ("match a regular expression", "def find_numbers(text): return re.findall(r'\\d+', text)"),
    ("start a thread", "def run_async(fn): t = threading.Thread(target=fn); t.start(); return t"),
    ("encode text as base64", "def b64(data): return base64.b64encode(data).decode()"),
    ("generate a random integer", "def roll(): return random.randint(1, 6)"),
    ("join paths on disk", "def under(root, name): return os.path.join(root, name)"),
    ("send an http request", "def fetch(url): return urllib.request.urlopen(url).read()"),
    ("format a float with two decimals", "def money(x): return f'{x:.2f}'"),
    ("remove duplicate items", "def unique(items): return list(dict.fromkeys(items))"),
    (
        "measure elapsed time",
        "def timed(fn): t = time.perf_counter(); fn(); return time.perf_counter() - t",
    ),
    ("read a csv file", "def rows(path): return list(csv.reader(open(path)))"),
]
SPLITS = {"train": range(0, 10), "dev": range(10, 14), "test": range(14, 18)}


def write_beir(root: Path) -> Path:
    """Write the dataset under `root` and return it; every query has one relevant document."""
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    with (root / "corpus.jsonl").open("w") as corpus, (root / "queries.jsonl").open("w") as qs:
        for i, (query, document) in enumerate(TOPICS):
            corpus.write(json.dumps({"_id": f"d{i}", "title": "", "text": document}) + "\n")
            qs.write(json.dumps({"_id": f"q{i}", "text": f"how to {query}"}) + "\n")
    for split, indices in SPLITS.items():
        lines = ["query-id\tcorpus-id\tscore"] + [f"q{i}\td{i}\t1" for i in indices]
        (root / "qrels" / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    return root
