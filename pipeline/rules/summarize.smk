# Stage summarize: per-cell rates with 95 % intervals over the grid's episodes.


rule summarize:
    """Summarise the grid: <data>/summaries/<grid>.{parquet,md}."""
    input:
        plan=NG.plan_path,
        episodes=NG.cell_shards("episodes"),
    output:
        NG.summary_paths,
    params:
        grid=NG.plan.name,
        data=NG.data_dir,
    log:
        str(NG.root / "logs" / "summarize" / f"{NG.plan.name}.log"),
    shell:
        "{ANALYSIS_CMD} --data-dir {params.data} summarize --grid {params.grid} > {log} 2>&1"
