# compileiq-controls v1 compiler=nvcc version=13.0
-Xcicc=-O3
-Xptxas=-O3
