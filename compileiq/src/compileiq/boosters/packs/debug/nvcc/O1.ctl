# compileiq-controls v1 compiler=nvcc version=13.0
-Xcicc=-O1
-Xptxas=-O1
