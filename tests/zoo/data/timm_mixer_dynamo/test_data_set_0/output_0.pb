
Blinear_8J(Ñ§¥¾qE)>±q½X@A=0&=>Mã<lT>¨.>€j¼==2=