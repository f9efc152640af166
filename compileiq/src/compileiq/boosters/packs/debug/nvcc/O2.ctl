# compileiq-controls v1 compiler=nvcc version=13.0
-Xcicc=-O2
-Xptxas=-O2
