"""Cold start on GSM8K + course-written worked solutions: does it give GRPO a signal on 2-op problems?"""
import sys, time
sys.path.insert(0, "/work/main")
from datasets import Dataset, concatenate_datasets
from helpers.profiles import CPU
from helpers.cold_start import train_cold_start, build_sft_dataset, format_solution
from helpers.problems import make_problems
from helpers.data import make_prompt
n_gsm, n_gen, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
gsm = build_sft_dataset(n_gsm)
probs = [p for ops in (1, 2) for p in make_problems(n_gen // 2, ops=ops, split="train", seed=99)]
gen = Dataset.from_dict({"prompt": [make_prompt(p.question) for p in probs],
                         "completion": [[{"role": "assistant", "content": format_solution(p.solution)}] for p in probs],
                         "question": [p.question for p in probs], "answer": [p.answer for p in probs]})
ds = concatenate_datasets([gsm, gen]).shuffle(seed=0)
print(ds[0]["completion"][0]["content"][:300])
t = time.time()
c = train_cold_start(CPU, out, dataset=ds)
print("cold start s", round(time.time() - t))
