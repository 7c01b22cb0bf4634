"""The embedded ENCODE-DREAM-format data set: genome, peaks, labels, proteins.

Entry point: :func:`preprocess.synthetic.generate.generate_dataset`.
"""
